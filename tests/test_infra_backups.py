"""The data stack's backups, as a restore needs them (docs/deploy.md, "Backups and what they cost"): a week of
continuous backup by default, and the names a restored cluster is given, as exports of the data stack."""

from tests.support import cfn


def test_the_cluster_keeps_a_week_of_backups_unless_told_otherwise():
    """One day (the template's old figure) was past by the next event, when a wrong cancel is noticed; a week is free
    at this size. Aurora takes 1 to 35 days."""
    template = cfn.load(cfn.DATA_TEMPLATE)
    parameter = template["Parameters"]["BackupRetentionPeriod"]
    assert (parameter["Type"], parameter["Default"], parameter["MinValue"], parameter["MaxValue"]) == ("Number", 7, 1, 35)
    cluster = template["Resources"]["DatabaseCluster"]["Properties"]
    assert cluster["BackupRetentionPeriod"] == {"Ref": "BackupRetentionPeriod"}
    assert cfn.render(template)["Resources"]["DatabaseCluster"]["Properties"]["BackupRetentionPeriod"] == {"Ref": "BackupRetentionPeriod"}


def test_a_restore_finds_the_subnet_group_and_the_security_group_as_exports():
    """restore-db-cluster-to-point-in-time names the cluster's subnet group and security group: operations.md's restore
    reads them from these two outputs, exported under the data stack's name."""
    outputs = cfn.load(cfn.DATA_TEMPLATE)["Outputs"]
    assert outputs["DbSubnetGroupName"]["Value"] == {"Ref": "DatabaseSubnetGroup"}
    assert outputs["DbSubnetGroupName"]["Export"] == {"Name": {"Fn::Sub": "${AWS::StackName}-DbSubnetGroupName"}}
    assert outputs["DatabaseSecurityGroupId"]["Value"] == {"Fn::GetAtt": ["DatabaseSecurityGroup", "GroupId"]}
    assert outputs["DatabaseSecurityGroupId"]["Export"] == {"Name": {"Fn::Sub": "${AWS::StackName}-DatabaseSecurityGroupId"}}
    assert "Condition" not in outputs["DbSubnetGroupName"] and "Condition" not in outputs["DatabaseSecurityGroupId"]
